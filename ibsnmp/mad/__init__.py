"""InfiniBand management datagrams: their layouts, the umad transport, the SMA, PMA and SA
queries the live provider makes."""
