"""Test and demo parts shipped for integrators: the reference table server, the rig of
real processes, golden scenarios, a flawless dealer, the slow odds oracle."""
