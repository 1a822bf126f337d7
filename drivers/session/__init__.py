"""One device from its configuration to the host: what it is, its parts, its stored session.

- ``spec``: ``DeviceSpec`` (name, address, protocol, kind, ``DeviceTimings``), drivers' own
  terms for a device; ``parse_address`` reads the monitor's ``usb:VID:PID[:SERIAL]`` form.
- ``parts``: ``build_device(spec)``, the one way to build a device's transport, protocol object
  (``HostLink`` or a vendor ASCII adapter), translator and connection, for the daemon and the
  monitor alike; ``make_translator`` is the one rule that picks a translator.
- ``device_session``: ``DeviceSession``, a device whose inputs are stored before it is ACKed:
  it hands out what to store (``take``), then ACKs or releases (``stored`` / ``failed``); it
  keeps the translator's state, the device's identity and the lights the table asked for.
"""
