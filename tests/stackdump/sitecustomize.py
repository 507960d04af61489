"""Imported at start-up by an app server a browser test starts with this folder on PYTHONPATH: SIGUSR1 writes every
thread's stack to stderr (the server's log), so a test whose page never reaches its state can say where the server
was (tests/test_present.py). Nothing else changes in that process."""
import faulthandler
import signal

faulthandler.register(signal.SIGUSR1, all_threads=True)
