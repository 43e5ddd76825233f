from ir2onnx.cli import main

main()
