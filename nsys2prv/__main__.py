from nsys2prv.launch import entry

entry()
