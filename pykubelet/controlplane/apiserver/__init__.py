"""The Kubernetes API over HTTPS (aiohttp), the registry's HTTP face: routing and the
walk of a request (``app``), the filters (``filters/``: authentication, impersonation,
authorization), one handler per verb (``handlers/``), watches, Tables, discovery and
OpenAPI. It reaches storage only through the registry."""
