/**
 * The developer portal's kinds (Tyk Dashboard only). An APIDescription is the content of a
 * catalogue entry: it has nothing of its own on the Dashboard (the catalogues that list it
 * publish it), so its status names no id (statusIdField ''). A PortalAPICatalogue declares
 * entries of the organisation's catalogue; status.id is the catalogue's Dashboard id. A
 * PortalConfig is the organisation's portal configuration (one per organisation). Names and
 * finalizers are Tyk Operator's.
 */
import type { ManagedKind } from '../../engine/kind.js';
import { beginPortal, portalReferences, portalUnsupportedOn } from './view.js';

export const API_DESCRIPTION: ManagedKind = {
  kind: 'APIDescription',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'apidescriptions',
  finalizer: 'finalizers.tyk.io/portalapidescription',
  gatewayKind: 'portal-description',
  statusIdField: '',
  nothingToDelete: true,
  crdOptional: true,
  listedWhole: true,
  heldBy: { reason: 'referenced by catalogues', kind: 'PortalAPICatalogue', many: 'PortalAPICatalogues' },
  references: (obj) => portalReferences(obj, 'description'),
  unsupportedOn: (target) => portalUnsupportedOn('APIDescription', target),
  begin: (ctx) => beginPortal(ctx),
};

export const PORTAL_API_CATALOGUE: ManagedKind = {
  kind: 'PortalAPICatalogue',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'portalapicatalogues',
  finalizer: 'finalizers.tyk.io/portalapicatalogue',
  gatewayKind: 'portal-catalogue',
  statusIdField: 'id',
  nativeIdField: 'id',
  idChangeInBody: true,
  crdOptional: true,
  listedWhole: true,
  references: (obj) => portalReferences(obj, 'catalogue'),
  unsupportedOn: (target) => portalUnsupportedOn('PortalAPICatalogue', target),
  begin: (ctx) => beginPortal(ctx),
};

export const PORTAL_CONFIG: ManagedKind = {
  kind: 'PortalConfig',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'portalconfigs',
  finalizer: 'finalizers.tyk.io/portalconfiguration',
  gatewayKind: 'portal-configuration',
  statusIdField: 'id',
  nativeIdField: 'id',
  nothingToDelete: true,
  crdOptional: true,
  listedWhole: true,
  unsupportedOn: (target) => portalUnsupportedOn('PortalConfig', target),
  begin: (ctx) => beginPortal(ctx),
};
