"""Records: every file evalrepro writes, as versioned pydantic models."""
