// The host's version, in one place (discovery, card, CLI, user agents).
export const VERSION = '0.1.0';
