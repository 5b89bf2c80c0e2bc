from nsys2prv.cli import entry

entry()
