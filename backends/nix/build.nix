# What evalrepro's nix builder builds: `nix-build build.nix --argstr spec FILE`, where
# FILE holds the image records (as lib.nix reads them) and the keys of the images wanted.
# The out paths are printed in the order of `build`: one docker-archive each.
{ spec }:
let
  wanted = builtins.fromJSON (builtins.readFile spec);
  built = (import ./lib.nix).imagesFromRecords wanted.records;
in
map (key: built.images.${key}) wanted.build
