<?php
// PHP SoapClient (Debian php-cli + php-soap) built from the served WSDL, calling all seven operations;
// prints JSON. Usage: php soap_php.php <wsdl url> <ca file>
[$_, $wsdl, $ca] = $argv;
$context = stream_context_create(['ssl' => ['cafile' => $ca, 'verify_peer' => true, 'verify_peer_name' => true]]);
$client = new SoapClient($wsdl, ['stream_context' => $context, 'cache_wsdl' => WSDL_CACHE_NONE, 'exceptions' => true]);

function text($v) { return $v === null ? '' : (string) $v; }
// PHP: a one-element array arrives as a plain value, an empty one as an empty object.
function listOf($v) {
  if ($v === null) return [];
  return is_array($v) ? $v : [$v];
}
function rows($result) {
  $items = isset($result->ServiceDescriptions->ServiceDescription) ? listOf($result->ServiceDescriptions->ServiceDescription) : [];
  return array_map(fn($r) => [
    'name' => text($r->Name ?? null), 'type' => text($r->Type ?? null), 'url' => text($r->Url ?? null),
    'parentType' => text($r->ParentType ?? null), 'capabilities' => text($r->Capabilities ?? null),
    'description' => text($r->Description ?? null),
  ], $items);
}
$folders = $client->GetFolders();
$out = [
  'version' => $client->GetMessageVersion()->MessageVersion,
  'formats' => $client->GetMessageFormats()->MessageFormats,
  'tokenUrl' => text($client->GetTokenServiceURL()->TokenServiceURL ?? null),
  'requiresTokens' => (bool) $client->RequiresTokens()->Result,
  'folders' => array_map('text', isset($folders->FolderNames->String) ? listOf($folders->FolderNames->String) : []),
  'all' => rows($client->GetServiceDescriptions()),
  'root' => rows($client->GetServiceDescriptionsEx(['FolderName' => ''])),
  'utilities' => rows($client->GetServiceDescriptionsEx(['FolderName' => 'Utilities'])),
  'imagery' => rows($client->GetServiceDescriptionsEx(['FolderName' => 'Imagery'])),
  'empty' => rows($client->GetServiceDescriptionsEx(['FolderName' => 'Staging'])),
];
try {
  $client->GetServiceDescriptionsEx(['FolderName' => 'NoSuchFolder']);
  $out['unknownFolder'] = 'answered';
} catch (SoapFault $f) {
  $out['unknownFolder'] = 'soap:' . (str_contains($f->faultcode, ':') ? explode(':', $f->faultcode)[1] : $f->faultcode);
}
echo json_encode($out, JSON_UNESCAPED_SLASHES), "\n";
