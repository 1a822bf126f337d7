"""Device messages to table inputs: the scanner and shuffler translators, the RFID registry."""
