"""hango: a multi-tenant agent harness server."""
