"""Tools from Model Context Protocol servers: the operator's catalog, the tenant's servers, the client."""
