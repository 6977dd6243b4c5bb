"""What keeps the user safe: the risk review of proposed code and secret redaction."""
