"""The live subnet: what the MAD layer reads, made into fabric snapshots."""
