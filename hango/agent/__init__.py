"""The agent runtime: request types, the middleware chain, the run loop."""
