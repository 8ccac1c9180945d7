{
  # evalrepro's trial images, built by Nix from the pins of a lockfile. No inputs (no
  # nixpkgs): every file is a fixed-output path pinned by sha256 (the base's .debs, the
  # env's wheels, a repo's tree and history, Debian's static busybox), so a build needs no
  # network once those are in the store (`evalrepro lock` puts them there), and gives the
  # image Ids the lockfile records. backends/nix/lib.nix is the one implementation,
  # shared with evalrepro's nix builder.
  description = "evalrepro: reproducible SWE-bench-style evaluation images";

  outputs =
    { self }:
    let
      lib = import ./backends/nix/lib.nix;
      demo = lib.imagesFromLockfile (
        builtins.fromJSON (builtins.readFile ./lockfiles/demo-nix.lock.json)
      );
    in
    {
      # lib.imagesFromLockfile (builtins.fromJSON (builtins.readFile ./my.lock.json))
      #   -> { <instance id> = <docker-archive: podman load -i result>; }
      # lib.imagesFromRecords records -> { layers.<key>; images.<key>; }
      lib = { inherit (lib) imagesFromLockfile imagesFromRecords; };

      # The demo's images (lockfiles/demo-nix.lock.json), one per instance.
      packages.x86_64-linux = demo // {
        default = demo."demo__calc-1";
      };

      # No checks to build: `nix flake check` evaluates every package's derivation, which
      # needs no pinned file (building one does: `nix build .#demo__calc-1`).
      checks.x86_64-linux = { };
    };
}
