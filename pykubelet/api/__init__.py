"""Kubernetes API objects as the node and the API server read and write them: pure data and
rules, no I/O.

  types            the Pod (and ObjectMeta) as dataclasses: snake_case here, camelCase on the wire
  objects          the other served kinds: Node, Namespace, Event, ConfigMap, Secret, Binding,
                   Lease, PriorityClass, PodDisruptionBudget, Eviction, DeleteOptions, Status
  decode           strict decoding (the ground floor's walker) and Go-omitempty encoding
  defaults         the API server's defaulting
  validation       the Pod's checks on create and update (upstream's field errors)
  meta_validation  ObjectMeta, label selector and int-or-percent rules every kind shares
  object_validation  the other kinds' checks on create and update
  qos              QoS class and the oom-score rule
  resourcehelper   a pod's request and limit totals, the one rule the scheduler, kubectl
                   describe and the dashboard share (standard library only)
  kinds            one descriptor per served kind: the API server's door into all of the above
  manifest         YAML/JSON manifests of Pods, as a node reads its static pods
  machinery        the ground floor under all of them (apimachinery's job): field errors, the
                   walker, quantities, upstream's schema
"""
