"""A loopback adb server speaking adb's real host protocol, with emulated phones, for the Android tests."""
