"""The Subsonic/OpenSubsonic edge: /rest/* over the same core use cases as the REST edge."""
