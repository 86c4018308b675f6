import os
import sys

# The package as built (build/python), unless it is installed.
sys.path.insert(0, os.environ.get("CHORUS_PYTHON_PATH", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))
sys.path.insert(0, os.path.dirname(__file__))
