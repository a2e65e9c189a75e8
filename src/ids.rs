//! Identifiers: generation of the 14-character random ids and validation of client-given ids.
//!
//! Owns only the id formats of decisions.md section 2; uniqueness is checked by the owners of
//! each kind (the catalogue, the grid actor).

use rand::Rng;

/// A company's id: an integer, increasing from 1 and never reused (the hosted service's
/// `companyId` is an int64 JSON number).
pub type CompanyId = i64;
/// A project's id: an integer, increasing from 1 and never reused (`Project.id` and every
/// `projectId` of the hosted service are int64 JSON numbers).
pub type ProjectId = i64;

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A new random id: 14 lowercase alphanumerics (`xpzyv44ym2v49f`).
pub fn generate() -> String {
    let mut rng = rand::thread_rng();
    (0..14).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect()
}

/// A new random secret for an API key (40 alphanumerics, about 206 bits).
pub fn generate_secret() -> String {
    let mut rng = rand::thread_rng();
    (0..40).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect()
}

/// A client-given column or dependency id: `^[A-Za-z0-9]\w*$` (so never starting with `_`),
/// at most 100 characters.
pub fn is_valid_column_id(id: &str) -> bool {
    let mut chars = id.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    id.len() <= 100 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The longest record id accepted, in characters.
pub const MAX_RECORD_ID_CHARS: usize = 500;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_have_the_documented_shape() {
        let id = generate();
        assert_eq!(id.len(), 14);
        assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        assert_ne!(generate(), generate());
    }

    #[test]
    fn column_ids() {
        assert!(is_valid_column_id("enUS"));
        assert!(is_valid_column_id("col_1"));
        assert!(is_valid_column_id("1abc"));
        assert!(!is_valid_column_id("_recordId"));
        assert!(!is_valid_column_id(""));
        assert!(!is_valid_column_id("a-b"));
        assert!(!is_valid_column_id("a b"));
        assert!(!is_valid_column_id(&"a".repeat(101)));
    }
}
