<?php
// An import file read as Zabbix's frontend reads it before it touches the
// database (CConfiguration::import): its reader, the validator of the file's
// version, the converters to the frontend's version, the adapter. Prints
// the frontend's version and the templates with their discovery rules, or
// dies with the frontend's own message.
//
// php zabbix_import_check.php /usr/share/zabbix FILE yaml
[, $root, $file, $format] = $argv;
require_once $root.'/vendor/autoload.php';
require_once $root.'/include/defines.inc.php';
require_once $root.'/include/func.inc.php';
require_once $root.'/include/gettextwrapper.inc.php';
require_once $root.'/include/classes/core/CAutoloader.php';

$folders = [$root.'/include/classes'];
$tree = new RecursiveIteratorIterator(
	new RecursiveDirectoryIterator($root.'/include/classes', FilesystemIterator::SKIP_DOTS),
	RecursiveIteratorIterator::SELF_FIRST
);
foreach ($tree as $path => $info) {
	if ($info->isDir()) {
		$folders[] = $path;
	}
}
$autoloader = new CAutoloader();
$autoloader->addNamespace('', $folders);
$autoloader->register();

$data = CImportReaderFactory::getReader($format)->read(file_get_contents($file));
$factory = new CImportValidatorFactory($format);
$data = (new CXmlValidator($factory, $format))->setStrict(true)->validate($data, '/');
$schema = $factory->getObject(ZABBIX_EXPORT_VERSION)->getSchema();
$data = (new CConstantImportConverter($schema))->convert($data);
$data = (new CDefaultImportConverter($schema))->convert($data);
$data = (new CImportDataNormalizer($schema))->normalize($data);
$adapter = new CImportDataAdapter();
$adapter->load($data);

$rules = [];
foreach ($adapter->getDiscoveryRules() as $template => $template_rules) {
	$rules[$template] = array_keys($template_rules);
}
echo json_encode(['version' => ZABBIX_EXPORT_VERSION, 'discovery_rules' => $rules]), "\n";
