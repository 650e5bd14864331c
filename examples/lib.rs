//! Shared pieces of the docshape examples.
