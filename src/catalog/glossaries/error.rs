//! `GlossaryRefused`: why the catalogue refused a glossary request (its fields, links or
//! entries, or a bound), one case per refusal, each answered 400 `badRequest` (`impl Coded`,
//! exhaustive). Carried in `CatalogError::Glossary`; a glossary or entry not found is
//! `CatalogError::NotFound` as for every entity.

use super::{MAX_ENTRIES, MAX_GLOSSARIES_PER_COMPANY, MAX_LANGS, MAX_LINKS};
use crate::catalog::model::ProjectId;
use crate::error::{Coded, ErrorCode};
use crate::io::glossary::LangCode;

/// The longest glossary name and description, in characters.
pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_DESCRIPTION_CHARS: usize = 4000;

/// A refused glossary request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GlossaryRefused {
    #[error("A glossary's name is 1 to {MAX_NAME_CHARS} characters, not only spaces.")]
    Name,
    #[error("description is at most {MAX_DESCRIPTION_CHARS} characters.")]
    Description,
    /// A language code that is not one (the sentence says why).
    #[error("langs: {0}")]
    Lang(String),
    #[error("langs must keep {0}: terms of the glossary are in it.")]
    LangInUse(LangCode),
    #[error("A glossary has at most {MAX_LANGS} languages.")]
    TooManyLangs,
    #[error("A company has at most {MAX_GLOSSARIES_PER_COMPANY} glossaries; delete one first.")]
    TooManyGlossaries,
    /// The entries a change would leave.
    #[error("A glossary has at most {MAX_ENTRIES} entries; this change would make {0}.")]
    TooManyEntries(usize),
    #[error(
        "projects lists at most {MAX_LINKS} projects, each with at most {MAX_LINKS} databaseIds."
    )]
    TooManyLinks,
    #[error("Project {0} is listed twice in projects.")]
    ProjectTwice(ProjectId),
    /// An entry over one of `io::glossary`'s bounds (the sentence names it; an import's names
    /// the entry).
    #[error("{0}")]
    Entry(String),
}

impl Coded for GlossaryRefused {
    fn code(&self) -> ErrorCode {
        match self {
            GlossaryRefused::Name
            | GlossaryRefused::Description
            | GlossaryRefused::Lang(_)
            | GlossaryRefused::LangInUse(_)
            | GlossaryRefused::TooManyLangs
            | GlossaryRefused::TooManyGlossaries
            | GlossaryRefused::TooManyEntries(_)
            | GlossaryRefused::TooManyLinks
            | GlossaryRefused::ProjectTwice(_)
            | GlossaryRefused::Entry(_) => ErrorCode::BadRequest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::CatalogError;
    use crate::error::ApiError;

    #[test]
    fn refusals_are_bad_requests_with_their_sentences() {
        let err = ApiError::from(CatalogError::from(GlossaryRefused::ProjectTwice(3)));
        assert_eq!(err.code, ErrorCode::BadRequest);
        assert_eq!(err.message, "Project 3 is listed twice in projects.");
        let lang = LangCode::parse("ja").expect("ja");
        let refused = GlossaryRefused::LangInUse(lang);
        assert_eq!(refused.to_string(), "langs must keep ja: terms of the glossary are in it.");
    }
}
