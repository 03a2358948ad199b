"""MQTT: hosts publish their nodes (publisher); aggregators serve the union (aggregator)."""
