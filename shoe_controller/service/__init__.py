"""The process on the table PC: daemon, devices, config, control socket, systemd, logs."""
