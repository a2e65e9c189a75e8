//! Decoding a stored image of any format this build reads: 6 (written) and 5 a section at a
//! time, 1 to 4 whole from an aligned buffer.

use crate::grid::damage::LoadResult;
use crate::grid::image::{
    ArchivedBranchImage, ArchivedBranchImageV1, ArchivedBranchImageV2, ArchivedBranchImageV3,
    BranchImageV1, BranchImageV2, SectionSource, IMAGE_FORMAT_VERSION,
};
use crate::grid::ops::GridState;
use crate::persist::snapshot::Payload;

/// Decodes an image of format 4 from an aligned buffer.
pub fn decode_image_v4(bytes: &[u8]) -> LoadResult<GridState> {
    let archived = rkyv::access::<ArchivedBranchImage, rkyv::rancor::Error>(bytes)
        .map_err(|e| format!("validation: {e}"))?;
    GridState::from_archived(archived)
}

/// Decodes an image of any format this build reads from an aligned buffer, with the payloads
/// of its chain when it borrows sections (formats 5 and 6).
pub fn decode_any(
    format_version: u32,
    payload: &Payload,
    chain: &[Payload],
) -> LoadResult<GridState> {
    if !chain.is_empty() && format_version < 5 {
        return Err(format!("an image of format {format_version} with a base").into());
    }
    if format_version >= 5 {
        // Read a section at a time.
        let chain: Vec<&dyn SectionSource> =
            chain.iter().map(|p| p as &dyn SectionSource).collect();
        return match format_version {
            IMAGE_FORMAT_VERSION => GridState::decode_sections(payload, &chain),
            5 => GridState::decode_sections_v5(payload, &chain),
            version => Err(format!("unknown image format {version}").into()),
        };
    }
    let bytes = payload.whole().map_err(|e| format!("reading the image: {e}"))?;
    match format_version {
        4 => decode_image_v4(&bytes),
        3 => decode_image_v3(&bytes),
        2 => decode_image_v2(&bytes),
        1 => decode_image_v1(&bytes),
        version => Err(format!("unknown image format {version}").into()),
    }
}

/// Decodes an image of format 3 from an aligned buffer.
pub fn decode_image_v3(bytes: &[u8]) -> LoadResult<GridState> {
    let archived = rkyv::access::<ArchivedBranchImageV3, rkyv::rancor::Error>(bytes)
        .map_err(|e| format!("validation: {e}"))?;
    GridState::from_archived_v3(archived)
}

/// Decodes an image of format 2 from an aligned buffer.
pub fn decode_image_v2(bytes: &[u8]) -> LoadResult<GridState> {
    let archived = rkyv::access::<ArchivedBranchImageV2, rkyv::rancor::Error>(bytes)
        .map_err(|e| format!("validation: {e}"))?;
    let image: BranchImageV2 = rkyv::deserialize::<BranchImageV2, rkyv::rancor::Error>(archived)
        .map_err(|e| format!("decoding: {e}"))?;
    GridState::from_image_v2(image)
}

/// Decodes an image of format 1 from an aligned buffer.
pub fn decode_image_v1(bytes: &[u8]) -> LoadResult<GridState> {
    let archived = rkyv::access::<ArchivedBranchImageV1, rkyv::rancor::Error>(bytes)
        .map_err(|e| format!("validation: {e}"))?;
    let image: BranchImageV1 = rkyv::deserialize::<BranchImageV1, rkyv::rancor::Error>(archived)
        .map_err(|e| format!("decoding: {e}"))?;
    GridState::from_image_v1(image)
}
