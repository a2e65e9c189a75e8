//! Who is calling and what they may do: API keys, the `Principal` extractor, privileges,
//! accesses and plan tiers (decisions.md section 11), and `Denied`, why an access check refused.
//!
//! Owns the in-memory key ring read by handlers. It never changes the catalogue: keys are
//! created and revoked by the supervisor, which updates the ring.

pub mod denied;
pub mod keys;
pub mod limit;
pub mod principal;

pub use denied::Denied;
pub use keys::{hash_secret, Access, ApiKey, KeyKind, KeyRing, Privilege, Tier};
pub use limit::RateLimiter;
pub use principal::{Principal, Scope};
