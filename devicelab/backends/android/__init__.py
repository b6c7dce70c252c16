"""Android phones as devices: TensorFlow Lite ``benchmark_model`` run over adb.

Import the submodules directly (``devicelab.backends.android.benchmark_output``); this package
imports nothing itself so that reading the tool's output never pulls in adb or a phone.
"""
