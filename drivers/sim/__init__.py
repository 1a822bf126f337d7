"""Simulated shoe-link devices: a shoe (RFID or optical), a batch shuffler, a shuffler-dealer.

They speak docs/spec-protocol.md from the far side of a real pseudo-terminal or of pyusb's real
core,
so the controller's drivers run unchanged against them.

- ``devices``: the device models, sans-I/O (``ShoeSim``, ``ShufflerSim``,
  ``ShufflerDealerSim``, ``make_device(SimConfig(...))``), each a ``SimDevice`` (base.py)
  holding its mechanism (``DealingShoe`` in shoe.py, ``BatchShuffle`` and ``ShufflingDealer``
  in shufflers.py); scripted cards (``SimCard``, with flags and counter gaps), line faults
  (``device.out_faults`` / ``in_faults``), ``reboot``.
- ``pty``: ``SimRunner(device, link_path=..., control_path=...)`` runs a device behind a pty,
  in a thread (``start()``/``stop()``, ``call(fn)``, ``execute(request)``) or in the calling
  thread (``run()``); ``unplug(seconds)`` closes the pty and reopens a new one at the same
  symlink path.
- ``control``: the control commands (JSON lines over the Unix socket given by ``--control``;
  the same dicts through ``SimRunner.execute``) and ``SimControlClient``. Decision: a socket,
  not signals, because tests need replies (status, dealt cards) and several fields per
  command; SIGTERM/SIGINT just stop the process.
- ``process``: ``SimProcess(...)`` runs ``python -m drivers.sim`` in another process.
- ``usb``: ``VirtualUsbBackend`` puts the same devices behind ``usb.core.find(backend=...)``.
- ``uids``: deterministic RFID UIDs per (deck_serial, rank, suit) and the registry CSVs.

Command line: ``python -m drivers.sim --device shoe --kind rfid --pty-link /tmp/shoe
--control /tmp/shoe.ctl --pace 0.5 --decks 8 --seed 1`` (``--help`` for the rest).
"""
