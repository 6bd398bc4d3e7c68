# zeep (Debian python3-zeep) built from the served WSDL, calling all seven operations; prints JSON.
# Usage: /usr/bin/python3 soap_zeep.py <wsdl url>   (REQUESTS_CA_BUNDLE trusts the engine's certificate)
import json
import sys

import zeep
from zeep.exceptions import Fault

sys.dont_write_bytecode = True  # importing the shared scenario writes no __pycache__ into the source tree
from soap_scenario import descriptions, unknown_folder  # noqa: E402

client = zeep.Client(sys.argv[1])
svc = client.service


def items(result, key):
    # zeep unwraps a one-child wrapper into the list itself; an empty list comes back as None.
    if result is None:
        return []
    if isinstance(result, list):
        return result
    return result[key] or []


def rows(result):
    # zeep: empty strings come back as None.
    return [
        {
            "name": r["Name"] or "",
            "type": r["Type"] or "",
            "url": r["Url"] or "",
            "parentType": r["ParentType"] or "",
            "capabilities": r["Capabilities"] or "",
            "description": r["Description"] or "",
        }
        for r in items(result, "ServiceDescription")
    ]


out = {
    "version": svc.GetMessageVersion(),
    "formats": svc.GetMessageFormats(),
    "tokenUrl": svc.GetTokenServiceURL() or "",
    "requiresTokens": svc.RequiresTokens(),
    "folders": list(items(svc.GetFolders(), "String")),
    **descriptions(svc, rows),
    "unknownFolder": unknown_folder(svc, Fault, lambda fault: fault.code or ""),
}
print(json.dumps(out))
