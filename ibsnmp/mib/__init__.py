"""The served MIB objects: the five InfiniBand modules and IF-MIB bound to a
fabric snapshot as one virtual tree of cells (`registry.build_mib`), the
contexts that select a node (`targets`), and the SETs they accept.

Not to be confused with `ibsnmp.mib_sources` (the MIB source texts and errata),
`ibsnmp.compiled_mibs` (what pysmi makes of them) and `ibsnmp.mib_compiler`
(the compiler's driver).
"""
