"""The Kubernetes API over HTTPS (aiohttp): request routing, authentication and
authorization, the verbs, watches, patches, Tables, discovery and OpenAPI."""
