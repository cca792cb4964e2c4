"""The device lab: runs on a self-hosted runner host with phones or the HTP simulator (runner, adb, health, locks)."""
