# What both Python SOAP clients (soap_zeep.py, soap_suds.py) ask the catalog beyond its plain answers: every
# service, each folder's, and a folder that does not exist. Each client reads the answers its own way (`rows`) and
# says how its library reports a fault (`fault_code`).

FOLDERS = {"root": "", "utilities": "Utilities", "imagery": "Imagery", "empty": "Staging"}


def descriptions(svc, rows):
    out = {"all": rows(svc.GetServiceDescriptions())}
    for key, folder in FOLDERS.items():
        out[key] = rows(svc.GetServiceDescriptionsEx(FolderName=folder))
    return out


def unknown_folder(svc, fault_class, fault_code):
    try:
        svc.GetServiceDescriptionsEx(FolderName="NoSuchFolder")
        return "answered"
    except fault_class as fault:
        return "soap:" + fault_code(fault).split(":")[-1]
