"""One reader per data kind (each module's ``READER``); ``kinds.py`` declares which is which."""
