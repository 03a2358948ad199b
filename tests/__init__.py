"""The test suite, by kind: unit, wire, mib, e2e, ibsim, mqtt, container."""
