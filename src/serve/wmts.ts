// OGC WMTS 1.0.0 GetCapabilities of a style: one PNG layer in the GoogleMapsCompatible tile matrix set
// (EPSG:3857, 256 px tiles, zoom 0..22), fetched RESTfully from the 256 px raster tile route.
// Every URL carries the request's `key` (spec, Authentication 3).
import { withKey, type UrlContext } from '../sources/tilejson.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { styleExtent } from './style-tilejson.js';

/** Zoom levels of the tile matrix set: the service's whole zoom range; rendering overzooms past the data. */
export const WMTS_MAX_ZOOM = 22;
const TILE = 256;
/** Half the width of the Web Mercator square in metres. */
const ORIGIN = 20037508.342789244;

const xml = (s: string) =>
  s.replace(/[<>&'"]/g, (ch) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[ch]!);

function tileMatrices(tile: number): string {
  const scaleZ0 = (2 * ORIGIN) / tile / 0.00028;
  const out: string[] = [];
  for (let z = 0; z <= WMTS_MAX_ZOOM; z++) {
    const n = 2 ** z;
    out.push(`      <TileMatrix>
        <ows:Identifier>${z}</ows:Identifier>
        <ScaleDenominator>${scaleZ0 / n}</ScaleDenominator>
        <TopLeftCorner>${-ORIGIN} ${ORIGIN}</TopLeftCorner>
        <TileWidth>${tile}</TileWidth>
        <TileHeight>${tile}</TileHeight>
        <MatrixWidth>${n}</MatrixWidth>
        <MatrixHeight>${n}</MatrixHeight>
      </TileMatrix>`);
  }
  return out.join('\n');
}

export function wmtsCapabilities(state: AppState, style: LoadedStyle, ctx: UrlContext): string {
  const id = encodeURIComponent(style.id);
  return wmtsDocument({
    title: style.name,
    identifier: style.id,
    self: withKey(`${ctx.base}/styles/${id}/wmts.xml`, ctx.key),
    template: withKey(`${ctx.base}/styles/${id}/${TILE}/{TileMatrix}/{TileCol}/{TileRow}.png`, ctx.key),
    bounds: styleExtent(state, style.style).bounds,
    tileSize: TILE,
  });
}

/** One PNG layer of a WMTS document: its names, the document's own URL, the RESTful tile template and extent. */
export interface WmtsLayer {
  title: string;
  identifier: string;
  self: string;
  template: string;
  bounds: readonly number[];
  /** Tile edge in pixels of the tile matrices (the zoom levels keep their meaning; scales follow the size). */
  tileSize: number;
}

export function wmtsDocument(layer: WmtsLayer): string {
  const { title, identifier, self, template, bounds, tileSize } = layer;
  const matrixSet = tileSize === TILE ? 'GoogleMapsCompatible' : `GoogleMapsCompatible${tileSize}`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<Capabilities xmlns="http://www.opengis.net/wmts/1.0" xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:gml="http://www.opengis.net/gml" xsi:schemaLocation="http://www.opengis.net/wmts/1.0 http://schemas.opengis.net/wmts/1.0/wmtsGetCapabilities_response.xsd" version="1.0.0">
  <ows:ServiceIdentification>
    <ows:Title>${xml(title)}</ows:Title>
    <ows:ServiceType>OGC WMTS</ows:ServiceType>
    <ows:ServiceTypeVersion>1.0.0</ows:ServiceTypeVersion>
  </ows:ServiceIdentification>
  <ows:OperationsMetadata>
    <ows:Operation name="GetCapabilities">
      <ows:DCP>
        <ows:HTTP>
          <ows:Get xlink:href="${xml(self)}">
            <ows:Constraint name="GetEncoding">
              <ows:AllowedValues>
                <ows:Value>RESTful</ows:Value>
              </ows:AllowedValues>
            </ows:Constraint>
          </ows:Get>
        </ows:HTTP>
      </ows:DCP>
    </ows:Operation>
  </ows:OperationsMetadata>
  <Contents>
    <Layer>
      <ows:Title>${xml(title)}</ows:Title>
      <ows:Identifier>${xml(identifier)}</ows:Identifier>
      <ows:WGS84BoundingBox crs="urn:ogc:def:crs:OGC:2:84">
        <ows:LowerCorner>${bounds[0]} ${bounds[1]}</ows:LowerCorner>
        <ows:UpperCorner>${bounds[2]} ${bounds[3]}</ows:UpperCorner>
      </ows:WGS84BoundingBox>
      <Style isDefault="true">
        <ows:Identifier>default</ows:Identifier>
      </Style>
      <Format>image/png</Format>
      <TileMatrixSetLink>
        <TileMatrixSet>${matrixSet}</TileMatrixSet>
      </TileMatrixSetLink>
      <ResourceURL format="image/png" resourceType="tile" template="${xml(template)}"/>
    </Layer>
    <TileMatrixSet>
      <ows:Title>${matrixSet}</ows:Title>
      <ows:Abstract>the tile grid of Google Maps, EPSG:3857, ${tileSize} px tiles</ows:Abstract>
      <ows:Identifier>${matrixSet}</ows:Identifier>
      <ows:BoundingBox crs="urn:ogc:def:crs:EPSG:6.18.3:3857">
        <ows:LowerCorner>${-ORIGIN} ${-ORIGIN}</ows:LowerCorner>
        <ows:UpperCorner>${ORIGIN} ${ORIGIN}</ows:UpperCorner>
      </ows:BoundingBox>
      <ows:SupportedCRS>urn:ogc:def:crs:EPSG:6.18.3:3857</ows:SupportedCRS>
${tileSize === TILE ? '      <WellKnownScaleSet>urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible</WellKnownScaleSet>\n' : ''}${tileMatrices(tileSize)}
    </TileMatrixSet>
  </Contents>
  <ServiceMetadataURL xlink:href="${xml(self)}"/>
</Capabilities>
`;
}
