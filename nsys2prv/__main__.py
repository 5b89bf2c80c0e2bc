from nsys2prv.cli import main

main()
