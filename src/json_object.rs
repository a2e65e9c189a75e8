//! Structs read from JSON objects only. serde's derive reads a struct from a map of its fields
//! and also from a sequence of them in order, so `["r1", null, [...]]` would be read as
//! `{"id": "r1", "path": null, "cells": [...]}`; no client of the API means that. `ObjectOnly`
//! (and `object_only`, `optional_object` for fields) asks for a map and hands it to the
//! struct's own `Deserialize`, so a sequence is refused as a value of the wrong type.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// `T` read from a map only.
#[derive(Debug)]
pub struct ObjectOnly<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MapOnly(PhantomData)).map(ObjectOnly)
    }
}

/// Takes a map and reads `T` from it; anything else is of the wrong type.
struct MapOnly<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for MapOnly<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

/// A field holding a struct, read from an object only (`#[serde(deserialize_with)]`).
pub fn object_only<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    ObjectOnly::deserialize(d).map(|object| object.0)
}

/// An optional field holding a struct: `null` or absent (with `#[serde(default)]`) is none, an
/// object is read, anything else is of the wrong type.
pub fn optional_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<ObjectOnly<T>>::deserialize(d).map(|object| object.map(|o| o.0))
}

/// A list of structs, each read from an object only.
pub fn objects_only<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    Vec::<ObjectOnly<T>>::deserialize(d).map(|list| list.into_iter().map(|o| o.0).collect())
}

/// An optional list of structs: `null` or absent (with `#[serde(default)]`) is none, else each
/// element is read from an object only.
pub fn optional_objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Vec<T>>, D::Error> {
    Option::<Vec<ObjectOnly<T>>>::deserialize(d)
        .map(|list| list.map(|list| list.into_iter().map(|o| o.0).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Point {
        x: i32,
        #[serde(default)]
        y: Option<i32>,
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Shape {
        #[serde(default, deserialize_with = "optional_object")]
        at: Option<Point>,
        #[serde(default, deserialize_with = "objects_only")]
        corners: Vec<Point>,
    }

    #[test]
    fn structs_are_read_from_objects_and_sequences_are_refused() {
        let read: ObjectOnly<Point> = serde_json::from_str(r#"{"x": 1}"#).expect("an object");
        assert_eq!(read.0, Point { x: 1, y: None });
        assert!(serde_json::from_str::<Point>("[1, 2]").is_ok(), "serde's derive takes it");
        let refused = serde_json::from_str::<ObjectOnly<Point>>("[1, 2]").expect_err("refused");
        assert!(refused.to_string().contains("expected a JSON object"), "{refused}");
        let shape: Shape =
            serde_json::from_str(r#"{"at": null, "corners": [{"x": 2, "y": 3}]}"#).expect("read");
        assert_eq!(shape, Shape { at: None, corners: vec![Point { x: 2, y: Some(3) }] });
        for bad in [r#"{"at": [1, 2]}"#, r#"{"corners": [[1, 2]]}"#] {
            assert!(serde_json::from_str::<Shape>(bad).is_err(), "{bad}");
        }
    }
}
