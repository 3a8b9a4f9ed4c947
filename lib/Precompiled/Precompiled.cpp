// The precompiled header's owner needs a source file; it defines nothing.
