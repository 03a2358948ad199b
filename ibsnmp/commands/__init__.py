"""Sub-commands of the `ibsnmp` command line, one module each."""
