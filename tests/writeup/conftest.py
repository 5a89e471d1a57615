# Makes writeup/study importable as `study` from the tests, and scripts/ too: a script the tests
# load as a module imports its siblings (harness, wire) as it does when run from scripts/.
import os
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "writeup"))
# Last, so that the standard library's `profile` is not scripts/profile.py.
sys.path.append(os.path.join(HERE, "..", "..", "scripts"))
