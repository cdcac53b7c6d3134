"""The ground floor every package stands on, as k8s.io/apimachinery is upstream's: how
Kubernetes objects are read, written and judged, with no knowledge of any one kind.

It sits under pykubelet.api, the object model, and imports nothing above itself; pysched may
import pykubelet.api and nothing else of pykubelet (tests/unit/test_layering.py), so the
scheduler, the API server and the kubelet read one manifest by one set of rules and tell its
problems in one error type.

  field       structured field errors (upstream's field.Error): type, path, bad value, detail
  errors      DecodeError (unknown or ill-typed field) and ValidationError (a list of field
              errors)
  quantity    resource quantities: the bounded parser and the Quantity the model holds
              (standard library only: pykubectl imports it on its start-up path)
  timeutil    metav1.Time and MicroTime: Go's RFC 3339 reading, the wire's writing (standard
              library only, for pykubectl too)
  duration    HumanDuration, the ages kubectl and the API server's Tables print (standard
              library only)
  labels      label selectors' one matching rule (labels.Selector, LabelSelectorAsSelector),
              compiled once: the scheduler, the API server and the PDB users match by it
  codec       the walker: strict decode, Go-omitempty encode, compiled once per class
  meta        what every object answers about itself (upstream's meta.Accessor)
  marshal     json.Marshal's order of an untyped value, every map's keys sorted (standard
              library only)
  validation  name and label rules every kind shares
  manifest    YAML/JSON text into documents, fast (the C parser, JSON straight through json)
  openapi     upstream's schema (definitions.json) as the API server and strategic merge
              patch need it
"""
