"""The ground floor every package stands on: how Kubernetes objects are read, written and
judged, with no knowledge of any one kind.

It lives inside pysched because pysched may import nothing from pykubelet while pykubelet may
import pysched (tests/unit/test_layering.py): both object models, pysched's slim scheduling
view and pykubelet.api's complete one, are declared for the one walker here, so one manifest is
read by one set of rules and its problems are told in one error type.

  field     structured field errors (upstream's field.Error): type, path, bad value, detail
  errors    DecodeError (unknown or ill-typed field) and ValidationError (a list of field errors)
  codec     the walker: strict decode, Go-omitempty encode, compiled once per class
  manifest  YAML/JSON text into documents, fast (the C parser, JSON straight through json)
"""
