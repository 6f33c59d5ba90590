//! Unit tests, after upstream's workloadspread tables.
