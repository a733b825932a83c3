from hango.cli import entry

entry()
