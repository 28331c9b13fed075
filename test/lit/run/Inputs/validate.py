"""validate.py SCHEMA DOC...: checks documents against a JSON schema (python3-jsonschema), prints valid N."""
import json,sys,jsonschema
s=json.load(open(sys.argv[1])); jsonschema.Draft202012Validator.check_schema(s); v=jsonschema.Draft202012Validator(s)
bad=0
for p in sys.argv[2:]:
    for e in v.iter_errors(json.load(open(p))): print(p, e.message); bad+=1
print("invalid" if bad else "valid", len(sys.argv)-2)
