"""The package's HELM clients; deployments name them by module path (docs/clients.md)."""
