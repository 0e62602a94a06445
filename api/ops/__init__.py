"""What the operator sees: Prometheus metrics, the request middleware, JSON logs, the scrubber's
schedule."""
