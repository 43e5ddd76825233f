import sys

from ir2onnx.cli import main

sys.exit(main())
