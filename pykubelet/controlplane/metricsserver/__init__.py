"""metrics-server built in (as k3s bundles it): nodes' ``/metrics/resource`` scraped,
CPU rates from two points, and metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics served
by the API server itself."""
