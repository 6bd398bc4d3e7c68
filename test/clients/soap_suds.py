# suds (Debian python3-suds) built from the served WSDL, calling all seven operations; prints JSON.
# Usage: /usr/bin/python3 soap_suds.py <wsdl url>   (SSL_CERT_FILE trusts the engine's certificate)
import json
import sys

from suds import WebFault
from suds.client import Client

sys.dont_write_bytecode = True  # importing the shared scenario writes no __pycache__ into the source tree
from soap_scenario import descriptions, unknown_folder  # noqa: E402

client = Client(sys.argv[1], cache=None)
svc = client.service


def text(value):
    return "" if value is None else str(value)


def rows(result):
    # suds: the wrapper's single child is unwrapped; an empty list comes back empty or None.
    if not result:
        return []
    items = getattr(result, "ServiceDescription", None) or []
    if not isinstance(items, list):
        items = [items]
    return [
        {
            "name": text(r.Name),
            "type": text(r.Type),
            "url": text(r.Url),
            "parentType": text(r.ParentType),
            "capabilities": text(r.Capabilities),
            "description": text(r.Description),
        }
        for r in items
    ]


folders = svc.GetFolders()
folder_list = getattr(folders, "String", []) if folders else []
out = {
    "version": text(svc.GetMessageVersion()),
    "formats": text(svc.GetMessageFormats()),
    "tokenUrl": text(svc.GetTokenServiceURL()),
    "requiresTokens": bool(svc.RequiresTokens()),
    "folders": [text(f) for f in (folder_list if isinstance(folder_list, list) else [folder_list])],
    **descriptions(svc, rows),
    "unknownFolder": unknown_folder(svc, WebFault, lambda fault: str(fault.fault.faultcode)),
}
print(json.dumps(out))
