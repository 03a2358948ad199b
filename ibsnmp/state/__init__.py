"""The agent's writable state: what managers configure through SETs
(overrides), the SA request sessions they open, the transactions a SET
works on and the state file that keeps the configuration (store)."""
